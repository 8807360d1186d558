"""Built-in policies. Each module registers itself with :func:`scheduler.core.policy.register_policy`."""

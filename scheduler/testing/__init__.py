"""Aids for tests and measurements outside the service: nothing in the runtime package imports
them (an import contract in ``make lint`` keeps it so)."""

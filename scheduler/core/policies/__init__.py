"""Built-in policies: Henge's state machine (:mod:`.henge`) and the baselines of DESIGN §4.

:mod:`.registry` looks them up by name.
"""

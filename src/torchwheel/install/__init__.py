"""Installing the chosen wheel: ``installing`` writes with ``installer``, keeping a
``journal`` (checked whole by ``journal_check``) that ``recovery`` replays after a kill,
``signals`` unwinds an interrupt to the rollback, ``dependencies`` holds the wheel's other
requirements against the environment.
"""

"""``doctor``: an installed environment read without running it (``environment``), each
installed extension judged against the environment's torch or a planned one (``diagnosis``),
an import error a user pastes taken apart (``import_error``), the command's flow
(``checkup``) and its outputs (``doctor_report``).
"""

"""Rendering only: facts, findings, compat results and GitHub annotations as text (escaped:
``textsafe``) and as the versioned JSON documents of ``docs/reference/json.md``. Nothing here decides."""

"""What the tests share: plain helper functions (``helpers``), the local index server, the
fork server of the hostile corpus, the LIEF reference readers, the publishing stand-ins.
pytest fixtures live in ``tests/conftest.py``; nothing here is a test."""

"""torch's tables and their upkeep: which release introduced each stable shim (``symtable``,
from the exports ``shimorigin`` records and the header gates of ``headergates`` and
``shim_headers``), what torch's own libraries export (``exports``, ``exports_update``), which
tables a command uses (``tablechoice``) and ``symbols update`` (``tableupdate``).
"""

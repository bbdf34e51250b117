"""Publishing so that other installers choose right: the per-torch indexes (``simple_index``)
with their page for people (``front_page``), the ``matrix`` of what loads where, and the wheel
variant provider plugin (``variant_plugin``).
"""

"""The network, bounded: every HTTP request of every command (``fetch``: sessions, budgets,
digests checked), the per-host caps and retries all workers share (``fairness``), index URLs
with their credentials carried and hidden (``urls``), what an index page says in either form
(``pages``: PEP 503 HTML, PEP 691 JSON) and the ranges of a hosted wheel read without
downloading it (``ranged``, pip's ``lazy_wheel``). Nothing here judges a wheel.
"""

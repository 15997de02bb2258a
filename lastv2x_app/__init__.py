"""The composition roots: the ``lastv2x`` command (``cli``), ``make run`` (``demo``) and the
local stack (``stack``).

They wire the shared package (``lastv2x``: contracts, core, rpc) and the services
(``services/<name>``) together, so they may import anything; nothing imports them
(``tests/test_layers.py``).
"""

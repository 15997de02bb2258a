"""Exports of archived witnesses for other tools: OpenSCENARIO 1.x + OpenDRIVE (``xosc``),
checked against the ASAM schemas the ``scenariogeneration`` wheel ships (``asam``)."""

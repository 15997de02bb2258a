"""Mutants of the platform's application and reconstruction code (STRaP §5.2).

STRaP builds its regression benchmarks by injecting mutants into the modules
under test ("replacing arithmetic operators, changing constant values, ...
changing condition operators").  :func:`generate_mutants` does that with
``ast`` on the source of

* the six applications — ``services/simulator/apps/signal.py`` (RLVW, GLOSA)
  and ``services/simulator/apps/conflict.py`` (FCW, EEBL, IMA, LTA);
* the V2X reconstruction — ``services/simulator/v2x/reconstruction.py``;

with three operator classes:

``operator_swap``
    comparisons ``<`` ↔ ``<=``, ``>`` ↔ ``>=``, ``==`` ↔ ``!=``, ``is`` ↔
    ``is not``, ``in`` ↔ ``not in``; arithmetic ``+`` ↔ ``-``, ``*`` ↔ ``/``
    (also augmented ``+=`` ↔ ``-=``); boolean ``and`` ↔ ``or``;
``constant``
    every numeric literal in a function body or a module-level ``UPPER_CASE``
    constant (the thresholds: ``FCW_TTC_S = 2.5``) ``× 0.5`` and ``× 2`` —
    except ``0``, integers ``±1`` and integers used as indices, shifts or
    masks, whose change is a crash or a no-op rather than a plausible fault;
``condition_flip``
    ``if c:`` → ``if not c:`` (statements and conditional expressions).

Sites are found by one deterministic pre-order walk of the module (fields in
``ast`` order; function signatures, annotations, decorators and docstrings are
not mutated), so ids and order are stable for a given source: the id is
``<module>:<function>:L<line>C<col>:<operator>`` (plus ``#k`` if a site yields
several mutants of one kind at one place).  A mutant is compiled into its own
module object from the mutated tree (:meth:`Mutant.load`): nothing is written
to the source tree and ``sys.modules`` is left as it was, so mutants never leak
into the code that imports the originals.

:func:`reachable_functions` gives, per application, the functions (and
constants) its ``decide`` can reach, so a benchmark pairs each application only
with the mutants that can change it; :func:`instrumented` loads an unmutated
copy whose functions count their calls (the paper's CC baseline).
"""

from services.strap.mutant_reach import (
    CallCounter,
    affects,
    application_mutants,
    instrumented,
    reachable_functions,
    readers_of,
)
from services.strap.mutant_sites import (
    APP_MODULES,
    CLASSES,
    DEFAULT_MODULES,
    RECONSTRUCTION_MODULE,
    Mutant,
    Site,
    by_class,
    generate_mutants,
    sites,
)

__all__ = ["APP_MODULES", "CLASSES", "DEFAULT_MODULES", "RECONSTRUCTION_MODULE", "CallCounter", "Mutant", "Site",
           "affects", "application_mutants", "by_class", "generate_mutants", "instrumented", "reachable_functions",
           "readers_of", "sites"]

"""``attnlimits sweep SPEC``: one experiment over a grid of settings, cell by cell.

``spec`` (the TOML spec, every cell's Config built up front) → ``backends`` (each cell one
:func:`~attnlimits.experiments.skeleton.run` into ``out/cells/<id>``, serially or as Ray
tasks) → ``merge`` (the cells' tables in one, with the axis values as columns; ``run.json``;
``report.md``, with an estimate of how the sweep scales over more workers from ``scaling``).
``runner.run_sweep`` does all three; docs/distributed.md shows how to run it.
"""

from attnlimits.experiments.sweep.backends import BACKENDS, RAY_MISSING, CellResult, run_cells
from attnlimits.experiments.sweep.merge import merge_tables
from attnlimits.experiments.sweep.runner import default_out, run_sweep
from attnlimits.experiments.sweep.scaling import lpt_makespan, scaling_table
from attnlimits.experiments.sweep.spec import Cell, Spec, load_spec

__all__ = [
    "BACKENDS",
    "RAY_MISSING",
    "Cell",
    "CellResult",
    "Spec",
    "default_out",
    "load_spec",
    "lpt_makespan",
    "merge_tables",
    "run_cells",
    "run_sweep",
    "scaling_table",
]

"""``python -m attnlimits.cli``: the same commands as the ``attnlimits`` script."""

from attnlimits.cli import main

main()

"""``python -m physmocap.cli`` (as ``python -m physmocap`` and the ``physmocap`` script)."""
import sys

from . import main

sys.exit(main())

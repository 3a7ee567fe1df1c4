import sys

from benchmarks.scenarios.cli import main

sys.exit(main())

import sys

from pgrun.cli import main

sys.exit(main())

import sys

from tracetriage.cli import main

sys.exit(main())

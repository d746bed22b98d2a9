import sys

from unfurl_lite.cli import main

sys.exit(main())

import sys

from unfurl_lite.cli.main import main

sys.exit(main())

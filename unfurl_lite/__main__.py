from unfurl_lite.cli import main

main()

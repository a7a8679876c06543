from irtool.cli.console import main

raise SystemExit(main())

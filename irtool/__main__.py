from irtool.console import main

raise SystemExit(main())

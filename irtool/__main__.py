from irtool.cli import main

raise SystemExit(main())

from cachewise.cli import main

raise SystemExit(main())

from sglang_contracts.cli import main

raise SystemExit(main())

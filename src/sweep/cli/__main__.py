from sweep.cli.main import main

main()

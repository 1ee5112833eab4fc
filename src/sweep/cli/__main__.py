from sweep.cli.main import program

program()

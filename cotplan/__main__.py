from cotplan.cli import main

main()

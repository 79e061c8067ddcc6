from onthedot.cli import main

main()

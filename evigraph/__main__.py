from evigraph.cli.app import main

main()

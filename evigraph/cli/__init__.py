"""The ``evigraph`` command line (typer + rich). Library code never prints; this package renders."""

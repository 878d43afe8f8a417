"""The ``tuner`` command line: one module per subcommand, heavy imports inside commands.

The entry point is :func:`tuner.cli.main.main`; nothing here is imported by the rest of
the package."""

__all__: list[str] = []

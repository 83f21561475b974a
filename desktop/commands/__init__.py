"""The `keepmind` subcommands, one module per area; each exposes `register(subparsers)`."""

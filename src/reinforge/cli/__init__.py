"""The reinforge command-line interface."""

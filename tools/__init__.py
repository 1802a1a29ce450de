"""The project's Python tools (not its tests): see tools/pandemonium/."""

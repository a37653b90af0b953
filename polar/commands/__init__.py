"""The `polar` command line: one module per command group, on top of every other layer.

`app` builds the typer application from the modules it lists; nothing in `polar` imports this
package (checked by tests/test_layers.py), and no other package imports typer.
"""

"""Lazy inputs: Jinja2 templates in a sandbox and TOSCA's functions, evaluated against
read-only views of the model when a value is read, with secrets tainted through them.

Below ``load`` because validation must know the filters and functions that exist, and
below ``plan`` because change detection renders inputs to compare their digests.
"""

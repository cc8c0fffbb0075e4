"""Plans of commands: ordered, previewable steps built from a decision; recipes never run them.

Importing the package registers every recipe (recipes/registry.py): each module declares its
own. A new recipe module is added to this list.
"""

from recipes import lvmcache, writecache, bcache, removal  # noqa: F401, I001 - each registers its recipes, in this order

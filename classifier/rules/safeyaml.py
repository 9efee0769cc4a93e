"""YAML that cannot hurt: libyaml's safe loader where present, and a refusal of alias bombs.

Rule files are hostile input too (a user's `--rules-dir`); the built-in ones are read here as
well when their examples are wanted.
"""

from typing import Any

import yaml

# libyaml parses the rule files ~10x faster than the pure-Python loader; both are safe loaders.
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
# Aliases let a 1 KB file stand for billions of nodes ("billion laughs"); whatever walks the
# data afterwards pays for every one. A rule file of the built-in set expands to ~5,000 nodes.
MAX_EXPANDED_NODES = 200_000


def _children(node):
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    return node.value if isinstance(node, yaml.SequenceNode) else []


def _expanded_size(root):
    """Nodes under `root` with every alias expanded; each shared node is sized once, and the
    walk uses its own stack (libyaml allows nesting deeper than Python's recursion limit)."""
    sizes = {}
    stack = [(root, False)]
    while stack:
        node, done = stack.pop()
        if done:
            sizes[id(node)] = 1 + sum(sizes.get(id(c), 1) for c in _children(node))
        elif id(node) not in sizes:
            sizes[id(node)] = 1  # a node met again on its own path (a cycle) counts once
            stack.append((node, True))
            stack.extend((c, False) for c in _children(node) if id(c) not in sizes)
    return sizes[id(root)]


def safe_load_bounded(text: str, limit: int = MAX_EXPANDED_NODES) -> Any:
    """yaml.safe_load, refusing (yaml.YAMLError) a document whose aliases expand past `limit` nodes."""
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        if _expanded_size(node) > limit:
            raise yaml.YAMLError(f"aliases expand to over {limit:,} nodes (an alias bomb?)")
        return loader.construct_document(node)
    finally:
        loader.dispose()



"""In-tree plugins, one module per plugin, mirroring ``pkg/scheduler/framework/plugins``.

``registry.IN_TREE_REGISTRY`` maps each plugin name to its factory and ``registry.DEFAULT_MULTIPOINT``
lists the default profile's plugins in upstream order.
"""

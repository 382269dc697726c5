"""The version of the plugin API: what ``scheduler.framework`` promises plugin authors.

Semantic versioning over the names ``scheduler.framework`` exports (and the typed views of
``objects_storage``, ``objects_resource`` and ``objects_scheduling``), the protocols' method names and
signatures, and the documented behaviour of each extension point:

* MAJOR: something a plugin may rely on is removed or changes incompatibly (after its deprecation
  period: one minor release with a ``DeprecationWarning`` and a changelog entry);
* MINOR: something is added (a name, an optional protocol, an optional keyword parameter);
* PATCH: documentation or behaviour fixes that keep every signature.

``docs/plugin-api-changelog.md`` has an entry per version; ``tests/unit/framework/`` snapshots the
surface and fails when it changes without a new version and a changelog entry.
"""

PLUGIN_API_VERSION = "1.8.0"

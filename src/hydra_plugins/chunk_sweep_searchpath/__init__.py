"""Layers a project's own ``conf/`` over the configuration chunk-sweep ships.

Hydra finds this plugin in the ``hydra_plugins`` namespace package. When the primary config
folder is chunk-sweep's, the project's ``conf/`` (``sweep.common.paths.user_conf_path``) goes
just before it on the search path: a file there replaces the bundled file of the same group
and name, and a new file adds an option to its group (``corpus/handbook.yaml``,
``experiment/…``). Other Hydra applications in the same environment are left alone.
"""

from __future__ import annotations

from pathlib import Path

from hydra.core.config_search_path import ConfigSearchPath, SearchPathQuery
from hydra.plugins.search_path_plugin import SearchPathPlugin

PROVIDER = "chunk-sweep-project"


class ChunkSweepProjectSearchPath(SearchPathPlugin):
    def manipulate_search_path(self, search_path: ConfigSearchPath) -> None:
        from sweep.common.paths import conf_path, user_conf_path

        primary = conf_path()
        # hydra.main gives the main folder as a plain path, the compose API as file://...
        if not any(e.provider == "main" and e.path is not None
                   and Path(e.path.removeprefix("file://")).resolve() == primary
                   for e in search_path.get_path()):
            return
        user = user_conf_path()
        if user is not None:
            search_path.prepend(provider=PROVIDER, path=f"file://{user}",
                                anchor=SearchPathQuery(provider="main"))

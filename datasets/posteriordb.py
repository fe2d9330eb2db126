"""Twelve posteriors of posteriordb: their source files and readers of their data and reference draws.

posteriordb (Magnusson et al.; github stan-dev/posteriordb, pinned at commit :data:`COMMIT`) lays
a posterior ``<name>`` out as ``posterior_database/posteriors/<name>.json`` (which names its data
and reference posterior), ``data/data/<data>.json.zip`` (one JSON member: the Stan data) and
``reference_posteriors/draws/draws/<name>.json.zip`` (one JSON member: a list of chains, each a
mapping from a Stan parameter name such as ``beta[1]`` to its draws on the constrained scale;
here 10 chains x 1,000 NUTS draws). :data:`FILES` holds the byte size and SHA-256 of every file
read; :mod:`datasets.registry` registers them under ``posteriordb/posterior_database/...``, so
:func:`load_data` and :func:`load_reference_draws` read verified copies through
:func:`datasets.fetch.fetch` (cache, then offline mirror, then the raw GitHub URL).
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import numpy as np

from pmd_bench.datasets.errors import DatasetError, FormatError
from pmd_bench.datasets.settings import Settings

COMMIT = "28f8d3d6e975315f42aa274a8399f21e07a43b30"
ROOT = "posteriordb/posterior_database"
LICENCE = "BSD-3-Clause"
CITATION = (
    "M. Magnusson, J. Torgander, P.-C. Bürkner, L. Zhang, B. Carpenter and A. Vehtari, posteriordb: "
    "testing, benchmarking and developing Bayesian inference algorithms, arXiv:2407.04967 (2024); "
    f"database github.com/stan-dev/posteriordb at commit {COMMIT}."
)
NAMES = (
    "kidiq-kidscore_momiq",
    "earnings-logearn_height",
    "mesquite-logmesquite",
    "nes2000-nes",
    "eight_schools-eight_schools_noncentered",
    "arK-arK",
    "garch-garch11",
    "arma-arma11",
    "gp_pois_regr-gp_regr",
    "kilpisjarvi_mod-kilpisjarvi",
    "diamonds-diamonds",
    "hmm_example-hmm_example",
)

# Every file read, as "<kind> <stem> <bytes> <SHA-256>", computed once from the files at COMMIT;
# _LAYOUT gives each kind's path under ROOT.
_LAYOUT = {
    "posterior": "posteriors/{}.json",
    "data": "data/data/{}.json.zip",
    "draws": "reference_posteriors/draws/draws/{}.json.zip",
}
_MANIFEST = """
posterior arK-arK 303 b1875b9c423623bab2193adde1dd855f760537a698823b23c7762169a4021b9f
posterior arma-arma11 376 0d0cebcfc7310e4295f1541473a7c31e97591969f555bdda54d12270cb5389d8
posterior diamonds-diamonds 500 56968e68f0d31e2db24ce9742f2399da885640fe2947930bcfd25e3f88a0618c
posterior earnings-logearn_height 432 98a3114103a04d5fd5f1470a1b57e1ef41a733b0c718ab369180ac51f29662ec
posterior eight_schools-eight_schools_noncentered 395 d80278a50b8423fe605ed4afb40c5d638d72e559385b7b4578b67dc3f4f17f79
posterior garch-garch11 394 7043c8f387028b70ab69705a4abb9293c48dcfbea6273ed1c279502aaa1443fd
posterior gp_pois_regr-gp_regr 401 43430c9b72df8a985356b382de7ee814f216726f69c3b2962c12d3331c67c25d
posterior hmm_example-hmm_example 428 62da05f86d6a0f25a562e8866256abaaaa273bdcac1df2cf896ddc624e794b50
posterior kidiq-kidscore_momiq 423 e4e6d666cbf0afead1d98769bb695e9dd3d62ccb964c4d1e0e4705f64f5ea8fe
posterior kilpisjarvi_mod-kilpisjarvi 489 cfd1e924eca389d91dccff5b5a682e6ab254f49426746357b19c1519ee40bcae
posterior mesquite-logmesquite 423 ec8ae52218a538735ed948a78bcb51823f2df2321d9b842d83524cb56b35373a
posterior nes2000-nes 416 48641f834c1e22a26048f0d629ab690db14e37cedc3d9b6ea87662bb5e13de55
data arK 2062 6f2acbacb04655927bfc9173c42e51fc330bf08c6184242a62b7e39c22abe410
data arma 2037 354e7d7bb05ee08a3deeac45ce1d92ae11964a696b933ba82a3a0cfe134eb45a
data diamonds 307504 127d44a642f954b707bec2d82725e168d57a412d59487708794d4a17097f26ba
data earnings 3233 06a67aa61a99d59aee057486dae51ffad6b4f887e7f8f17733739cf893af312f
data eight_schools 255 8e37cc01fe05b0e1779255e9bd386261f3d61daf7f75f02f72f38cdc9750531c
data garch 2008 056100504a96a72ee6be6af80228d26189dea7343a30df6ecfefac70cc9b3957
data gp_pois_regr 321 9aaaa9d5694b74e2aefa6d0bd2f0a48637fcb4d455a74b33985e58154f285da9
data hmm_example 1098 8c346cc7627db1b5614b1eacb81ab9b0926aa63071ba2f3b6d6ec3b492892787
data kidiq 4289 16d341a99ec8178231eab660d8fda084a44145f6a241daf35276d0192d13b92d
data kilpisjarvi_mod 509 232e8c55bbe5c07b79b0b28c92917f71711c713579292a2f40a50bda279d968e
data mesquite 706 ec9db3a2e390892473e6172d76386ba9b26c3633a9682532eb34217189dcb0ac
data nes2000 1789 4170d5780771b54b763315b5c21772befd4ca208c62d23424535f4b4af347439
draws arK-arK 588785 7ddb947e6c1ac5380f9c1e1fa101833a1236ef03de30f2cf5ece7b5b71841530
draws arma-arma11 334970 6de4bfe5263e09b0421b15368da42720b3ddc2559f81b35e178a18ce05e299b9
draws diamonds-diamonds 2134287 2745f4857ceb358ff6c692ba1dd1fd9d01cf8bc5ac456ae87e3c957fd51c4aae
draws earnings-logearn_height 247241 189e6eea02f9fa56c744fe080d58d9a1da873601fcb8aa0738681a1c8cf991eb
draws eight_schools-eight_schools_noncentered 842986 0858641e630c877103dba2b78beaf6bc1f39435fc43d2894c4dff5d609c7a264
draws garch-garch11 329522 5a56df72455394fec4bca2b8186432be76c8b8ecabfa43eff15bf19308edbf18
draws gp_pois_regr-gp_regr 246501 df89f5011d9518b06c95a631c258ce03f4818b78deb40ed069cfd1d70074c8bb
draws hmm_example-hmm_example 492129 cd67e28247da25233d79d09df235075c6603735e45c28fdfa76125e515ece3cf
draws kidiq-kidscore_momiq 246156 ee5deb23bf2dad804393c682b308da720825f9b099c37d774526c3a5a590e8d7
draws kilpisjarvi_mod-kilpisjarvi 255529 a5bc7f19720bfaa073bc6ab16c837aa1ff921014bad09ea715494ed4723b9fad
draws mesquite-logmesquite 668131 741ddf71cad063821af0549ac78987f9f1d834848aeb180ce4edd083b02c8d62
draws nes2000-nes 836324 1b62971bd0ee49024afd2e77a3e0e2a10729a6b0ecf5d801f51233481b48cd74
"""



def _source_name(kind: str, stem: str) -> str:
    """The registered name of the ``kind`` file (a key of ``_LAYOUT``) of posterior or data set ``stem``."""
    return f"{ROOT}/{_LAYOUT[kind].format(stem)}"


FILES: dict[str, tuple[int, str]] = {
    _source_name(kind, stem): (int(size), sha256)
    for kind, stem, size, sha256 in (line.split() for line in _MANIFEST.strip().splitlines())
}
"""Source name (its path under a data directory or mirror) -> (bytes, SHA-256)."""


def url(name: str) -> str:
    """The canonical raw-GitHub URL of the source file ``name`` (``posteriordb/posterior_database/...``)."""
    return f"https://raw.githubusercontent.com/stan-dev/posteriordb/{COMMIT}/{name.removeprefix('posteriordb/')}"


def _fetch(name: str, settings: Settings) -> Path:
    # Imported here, not at the top: datasets.registry imports this module for FILES.
    from pmd_bench.datasets.fetch import fetch
    from pmd_bench.datasets.registry import SOURCES

    if name not in SOURCES:
        raise DatasetError(f"{name} is not a registered posteriordb file (registered: {len(FILES)} files)")
    return fetch(SOURCES[name], settings)


def _read_json(path: Path) -> object:
    try:
        return json.loads(path.read_text())
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise FormatError(f"{path}: not valid JSON ({error})") from None


def _read_zipped_json(path: Path) -> object:
    try:
        with zipfile.ZipFile(path) as archive:
            members = [member for member in archive.namelist() if member.endswith(".json")]
            if len(members) != 1:
                raise FormatError(f"{path}: expected one .json member, found {archive.namelist()}")
            text = archive.read(members[0])
    except zipfile.BadZipFile as error:
        raise FormatError(f"{path}: not a zip archive ({error})") from None
    try:
        return json.loads(text)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise FormatError(f"{path}: member {members[0]} is not valid JSON ({error})") from None


def _as_numbers(value: object) -> np.ndarray | None:
    """``value`` as a numeric numpy array, or None when it is not a number or a rectangular array of them."""
    try:
        array = np.asarray(value)
    except ValueError:  # ragged nesting
        return None
    return array if array.dtype.kind in "iuf" else None


def load_posterior(name: str, settings: Settings) -> dict:
    """The posteriordb description ``posteriors/<name>.json`` of posterior ``name`` (one of :data:`NAMES`)."""
    if name not in NAMES:
        raise DatasetError(f"unknown posteriordb posterior {name!r}; known: {', '.join(NAMES)}")
    path = _fetch(_source_name("posterior", name), settings)
    info = _read_json(path)
    if not isinstance(info, dict):
        raise FormatError(f"{path}: expected a JSON object, got {type(info).__name__}")
    for key in ("data_name", "reference_posterior_name"):
        if not isinstance(info.get(key), str):
            raise FormatError(f"{path}: field {key!r} is {info.get(key)!r}, expected a name")
    return info


def load_data(name: str, settings: Settings) -> dict[str, np.ndarray]:
    """The Stan data of posterior ``name``: each field as a numpy array (int or float; scalars 0-d).

    Raises :class:`~datasets.errors.FormatError` naming the file and field when a field is not a
    number or a rectangular array of numbers.
    """
    path = _fetch(_source_name("data", load_posterior(name, settings)["data_name"]), settings)
    raw = _read_zipped_json(path)
    if not isinstance(raw, dict):
        raise FormatError(f"{path}: the Stan data must be a JSON object, got {type(raw).__name__}")
    data = {}
    for field, value in raw.items():
        data[field] = _as_numbers(value)
        if data[field] is None:
            raise FormatError(f"{path}: field {field!r} is not a number or a rectangular array of numbers")
    return data


def load_reference_draws(name: str, settings: Settings) -> dict[str, np.ndarray]:
    """The reference draws of posterior ``name``: Stan parameter name -> ``(chains, draws)`` float64.

    Chains are kept apart (posteriordb: 10 chains x 1,000 draws, constrained scale). Raises
    :class:`~datasets.errors.FormatError` naming the file, chain and parameter when the chains
    disagree on their parameters or lengths or hold non-numbers.
    """
    reference = load_posterior(name, settings)["reference_posterior_name"]
    path = _fetch(_source_name("draws", reference), settings)
    chains = _read_zipped_json(path)
    if not isinstance(chains, list) or not chains or not all(isinstance(chain, dict) for chain in chains):
        raise FormatError(f"{path}: expected a non-empty list of chains, each a JSON object of draws")
    names = list(chains[0])
    draws = {}
    for parameter in names:
        columns = []
        for index, chain in enumerate(chains):
            if set(chain) != set(names):
                raise FormatError(f"{path}: chain {index} has parameters {sorted(chain)}, chain 0 has {sorted(names)}")
            column = _as_numbers(chain[parameter])
            if column is None or column.ndim != 1:
                raise FormatError(f"{path}: chain {index}, parameter {parameter!r}: expected a list of numbers")
            columns.append(column.astype(np.float64))
        if len({len(column) for column in columns}) != 1:
            raise FormatError(f"{path}: parameter {parameter!r}: chains have {[len(c) for c in columns]} draws")
        draws[parameter] = np.stack(columns)
    return draws

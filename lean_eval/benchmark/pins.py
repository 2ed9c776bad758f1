"""The benchmark's pins (design §5.1): every workspace builds against the root's toolchain and
packages, and a workspace without ``lake-manifest.json`` gets one derived from the root's.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from lean_eval.errors import CatalogError
from lean_eval.files.decoding import strict_json, toml_table


def derived_lake_manifest(root_manifest: bytes, lakefile: bytes, what: str) -> bytes:
    """The root's package pins under the workspace's name, as deterministic (indexable) bytes."""
    manifest = strict_json(root_manifest, "lake-manifest.json")
    name = toml_table(lakefile, what).get("name")
    if not isinstance(manifest, dict) or not isinstance(name, str):
        raise CatalogError(f"{what}: cannot derive a lake-manifest.json (no package `name`, or "
                           "the root lake-manifest.json is not an object)")
    derived = {**manifest, "name": name}
    return (json.dumps(derived, indent=1, ensure_ascii=False) + "\n").encode("utf-8")


def _requires(data: bytes, what: str) -> list[str]:
    entries = toml_table(data, what).get("require", [])
    if not isinstance(entries, list):
        raise CatalogError(f"{what}: `require` is not an array of tables")
    return sorted(json.dumps(entry, sort_keys=True) for entry in entries)


def _package_pins(data: bytes, what: str) -> list[tuple[str, str, str]]:
    manifest = strict_json(data, what)
    packages = manifest.get("packages") if isinstance(manifest, dict) else None
    if not isinstance(packages, list) or not all(isinstance(p, dict) for p in packages):
        raise CatalogError(f"{what}: `packages` is not an array of objects")
    return sorted((str(p.get("name")), str(p.get("url", p.get("dir"))), str(p.get("rev")))
                  for p in packages)


def pin_differences(pid: str, files: Mapping[str, bytes]) -> list[tuple[str, str]]:
    """(file, message) for each way workspace ``pid``'s pins differ from the root's."""
    prefix = f"workspaces/{pid}/"
    found: list[tuple[str, str]] = []
    if files.get(prefix + "lean-toolchain") != files["lean-toolchain"]:
        found.append((prefix + "lean-toolchain", "differs from the root lean-toolchain"))
    if prefix + "lakefile.toml" in files:
        mine = _requires(files[prefix + "lakefile.toml"], prefix + "lakefile.toml")
        if mine != _requires(files["lakefile.toml"], "lakefile.toml"):
            found.append((prefix + "lakefile.toml",
                          "[[require]] entries differ from the root lakefile.toml's"))
    if prefix + "lake-manifest.json" in files:
        mine_pins = _package_pins(files[prefix + "lake-manifest.json"],
                                  prefix + "lake-manifest.json")
        root_pins = _package_pins(files["lake-manifest.json"], "lake-manifest.json")
        if mine_pins != root_pins:
            drift = sorted(set(mine_pins) ^ set(root_pins))
            found.append((prefix + "lake-manifest.json",
                          f"package pins (name, url, rev) differ from the root's: {drift}"))
    return found

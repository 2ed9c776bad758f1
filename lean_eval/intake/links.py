"""Hard links in a submission (design §5.2): which are read as copies of files inside it.

Invariants (tests/intake/test_hard_links.py):
- A file of a directory submission with more than one name is read as a copy, each name read
  and counted toward ``max_total_bytes`` on its own, only when the walk met every one of its
  ``st_nlink`` names and the file is owned by the owner of the submission's root. A name in
  ``.lake`` or ``.git``, past the depth limit or anywhere outside the submission is a name the
  walk did not meet: the link is refused (its problem rejected) naming how many names it did
  not meet. The owner check stands where the count can be fooled (a name renamed during the
  walk is met twice): a local user's link to a file they do not own is refused either way.
- An archive's hard-link member is a copy of the earlier regular ``.lean`` member it names
  (``archive``, ``link_target``); its bytes count toward ``max_total_bytes`` again. A link
  naming an absolute path, a ``..`` path, no earlier member, or anything but such a file is
  refused saying which.
"""

from __future__ import annotations

from collections import defaultdict

from lean_eval.intake.bounds import SKIPPED_NAMES, Node, show


def settle(root: Node, owner: int) -> list[str]:
    """Mark each walked file of ``root`` whose hard link is not a copy (``Node.link_refusal``);
    the paths marked, sorted (the digest records them: a refusal is part of what was read)."""
    names: dict[tuple[int, int], list[tuple[str, Node]]] = defaultdict(list)
    stack = [("", root)]
    while stack:
        prefix, node = stack.pop()
        for name, child in node.children.items():
            if child.kind == "dir":
                stack.append((f"{prefix}{name}/", child))
            elif child.kind == "file" and child.inode is not None:
                names[child.inode].append((prefix + name, child))
    marked: list[str] = []
    for seen in names.values():
        for path, node in seen:
            met = len(seen)
            if met < node.nlink:
                node.link_refusal = (
                    f"hard link: {node.nlink - met} of its {node.nlink} names "
                    f"{'is' if node.nlink - met == 1 else 'are'} outside the submission (a hard "
                    "link is read as a copy only when every name is inside it)")
            elif node.uid != owner:
                node.link_refusal = (f"hard link owned by uid {node.uid}, not by uid {owner} "
                                     "who owns the submission")
            else:
                continue
            marked.append(path)
    return sorted(marked)


def link_target(parts: list[str], linkname: str, root: Node) -> Node:
    """The node an archive hard-link member at ``parts`` naming ``linkname`` stands for: a
    copy of the earlier member it names, or a "hard link" leaf saying why not."""
    def refused(why: str) -> Node:
        return Node("hard link", link_refusal=f"to {show(linkname)!r}: {why}")

    if linkname.startswith("/"):
        return refused("an absolute path, outside the archive")
    target = [p for p in linkname.split("/") if p not in ("", ".")]
    if ".." in target:
        return refused("a '..' path, which may leave the archive")
    if not target:
        return refused("names no member")
    if target == parts:
        return refused("names itself")
    if SKIPPED_NAMES.intersection(target):
        return refused("a member in .lake or .git, which intake does not read")
    node = root
    for name in target:
        child = node.children.get(name)
        if child is None or node.kind != "dir":
            return refused("no earlier member of the archive (a link names one before it)")
        node = child
    if node.kind != "file":
        return refused(f"a {node.kind}, not a regular file")
    if not target[-1].endswith(".lean"):
        return refused("not a .lean file (intake reads only .lean files)")
    return Node("file", data=node.data, oversize=node.oversize)

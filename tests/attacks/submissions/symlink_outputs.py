# expect: wrong_answer
# what: plants links in its job folder to host files, for the host to follow
import os


def collate(batch, pad_id=0, pad_to_multiple_of=None, padding_side="right"):
    workers = ["main"] + [f"gw{i}" for i in range(8)]
    links = {f"victim-{w}": f"/tmp/tj-attack-victim-{w}/victim.txt" for w in workers}
    links.update({f"dir-{w}": f"/tmp/tj-attack-victim-{w}" for w in workers})
    links.update({"shadow": "/etc/shadow", "root": "/", "loop": "loop",
                  "checkpoint.pt": "/tmp/tj-attack-victim-main/victim.txt"})
    for name, target in links.items():
        try:
            os.symlink(target, name)
        except OSError:
            pass
    os.makedirs("deep/er", exist_ok=True)
    os.symlink("/tmp/tj-attack-victim-main", "deep/er/dir")
    try:
        os.replace("victim-main", "submission.py")  # the grader's own file, now a link
    except OSError:
        pass
    return {"input_ids": None}

"""Updates a directory the way the kubelet updates a mounted ConfigMap (its AtomicWriter):
the payload goes into a new timestamped directory `..YYYY_MM_DD_HH_MM_SS.NNNN`, a
`..data_tmp` symlink to it is renamed over `..data`, each key is a symlink
`KEY -> ..data/KEY` (made once), and the previous timestamped directory is removed."""
import os
import shutil
import tempfile
import time


def write(directory, files):
    """files: {key: text}. Makes directory if needed; returns the new timestamped dir."""
    os.makedirs(directory, exist_ok=True)
    data = os.path.join(directory, "..data")
    old = os.readlink(data) if os.path.islink(data) else None
    stamp = time.strftime("..%Y_%m_%d_%H_%M_%S.", time.gmtime())
    ts_dir = tempfile.mkdtemp(prefix=stamp, dir=directory)
    for key, text in files.items():
        with open(os.path.join(ts_dir, key), "w") as f:
            f.write(text)
        os.chmod(os.path.join(ts_dir, key), 0o644)
    os.chmod(ts_dir, 0o755)
    tmp = os.path.join(directory, "..data_tmp")
    os.symlink(os.path.basename(ts_dir), tmp)
    os.rename(tmp, data)
    for key in files:
        link = os.path.join(directory, key)
        if not os.path.islink(link):
            os.symlink(os.path.join("..data", key), link)
    if old is not None:
        shutil.rmtree(os.path.join(directory, old))
    return ts_dir

#!/usr/bin/python3
"""Writes a directory as a one-layer OCI image layout tarball that `ctr images import` takes:
blobs/sha256/{layer, config, manifest}, index.json naming the image (containerd's
io.containerd.image.name annotation) and oci-layout. The idea not to miss: the layer is an
uncompressed tar whose digest is also its diff_id, so no compression step can make the two
disagree; the image is for linux/amd64-style hosts as this machine's (its platform is read from
the running Python).

Usage: oci_image.py ROOTFS_DIR NAME:TAG OUT.tar [--entrypoint PATH]
"""
import argparse
import hashlib
import io
import json
import platform
import tarfile

ARCH = {"x86_64": "amd64", "aarch64": "arm64"}.get(platform.machine(), platform.machine())


def blob(out, data, media_type):
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    info = tarfile.TarInfo("blobs/sha256/" + digest[7:])
    info.size = len(data)
    out.addfile(info, io.BytesIO(data))
    return {"mediaType": media_type, "digest": digest, "size": len(data)}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("rootfs")
    p.add_argument("name")
    p.add_argument("out")
    p.add_argument("--entrypoint", default="")
    a = p.parse_args()

    layer_buf = io.BytesIO()
    with tarfile.open(fileobj=layer_buf, mode="w", format=tarfile.PAX_FORMAT) as layer:
        layer.add(a.rootfs, arcname=".")
    layer_data = layer_buf.getvalue()

    with tarfile.open(a.out, "w") as out:
        layer_desc = blob(out, layer_data, "application/vnd.oci.image.layer.v1.tar")
        config = {"architecture": ARCH, "os": "linux",
                  "config": {"Env": ["PATH=/bin:/usr/bin"], "WorkingDir": "/",
                             **({"Entrypoint": [a.entrypoint]} if a.entrypoint else {})},
                  "rootfs": {"type": "layers", "diff_ids": [layer_desc["digest"]]}}
        config_desc = blob(out, json.dumps(config).encode(), "application/vnd.oci.image.config.v1+json")
        manifest = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                    "config": config_desc, "layers": [layer_desc]}
        manifest_desc = blob(out, json.dumps(manifest).encode(), "application/vnd.oci.image.manifest.v1+json")
        manifest_desc["platform"] = {"architecture": ARCH, "os": "linux"}
        manifest_desc["annotations"] = {"io.containerd.image.name": a.name,
                                        "org.opencontainers.image.ref.name": a.name.rsplit(":", 1)[-1]}
        index = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
                 "manifests": [manifest_desc]}
        for name, data in (("index.json", json.dumps(index).encode()),
                           ("oci-layout", b'{"imageLayoutVersion": "1.0.0"}')):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            out.addfile(info, io.BytesIO(data))


if __name__ == "__main__":
    main()

"""bench-soak: an hour of a user's mixed load under scx_pandemonium in the VM (host side; the
guest side is soak.sh, which reuses bench-stress's driver.sh workloads)."""

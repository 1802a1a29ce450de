"""bench-stress: the reliability matrix run in the VM (host side; the guest side is driver.sh)."""

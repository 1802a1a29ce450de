"""Host tests of the service guest's BPF map reader: what it decodes (the syscalls need root and a
loaded scheduler; the service layer runs them in the VM)."""

import struct

from tools.pandemonium.vm import bpf_map


def test_a_comm_key_is_its_bytes_up_to_the_first_nul():
    assert bpf_map.comm_of(b"svc-game\0\0\0\0\0\0\0\0") == "svc-game"
    assert bpf_map.comm_of(b"exactly15bytes!\0") == "exactly15bytes!"


def test_an_entry_decodes_as_intf_h_lays_out_task_class_entry():
    assert bpf_map.TASK_CLASS_ENTRY.size == 16  # u8, u8, u16, u32, u64
    entry = struct.pack("=BBHIQ", 2, 1, 0, 640, 200_000)
    assert bpf_map.tier_of(entry) == "LAT_CRITICAL"
    assert bpf_map.tier_of(struct.pack("=BBHIQ", 0, 0, 0, 1, 1)) == "BATCH"
    assert bpf_map.tier_of(struct.pack("=BBHIQ", 7, 0, 0, 1, 1)) == "tier 7"


def test_tier_names_follow_the_bpf_enum():
    src = (bpf_map.__file__.rsplit("/tools/", 1)[0] + "/src/bpf/intf.h")
    text = open(src).read()
    for value, name in bpf_map.TIER_NAMES.items():
        assert f"TIER_{name} = {value}," in text


def test_map_info_reads_the_name_where_the_kernel_puts_it():
    # struct bpf_map_info: six u32 (type, id, key_size, value_size, max_entries, map_flags),
    # then char name[16].
    assert bpf_map.MAP_INFO.size == 6 * 4 + 16

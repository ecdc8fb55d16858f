"""The functions a shared object defines, read from its dynamic symbol table.

Internal, for ``python -m gpuslack doctor`` (doctor.py): which names
libgpuslack.so hooks (it exports exactly the API it hooks, its own
gpuslack_* and dlsym: interpose/libgpuslack.map), and which of them an object
ahead of it in LD_PRELOAD defines. Read from the file, never loaded: loading
a library runs its constructors.

64-bit ELF only, either byte order (x86_64, aarch64); the section headers'
SHT_DYNSYM table, which every shared object the loader can use keeps.
"""
import struct

SHT_DYNSYM = 11
STT_FUNC = 2
STT_GNU_IFUNC = 10
SHN_UNDEF = 0


class NotReadable(Exception):
    """The file is not a 64-bit ELF object with a dynamic symbol table (the
    message says which)."""


def defined_functions(path):
    """The set of function names `path` defines and exports (global or weak,
    default or protected visibility). Raises NotReadable or OSError."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != b"\x7fELF":
        raise NotReadable("%s is not an ELF file" % path)
    if data[4] != 2:
        raise NotReadable("%s is not a 64-bit ELF object" % path)
    end = "<" if data[5] == 1 else ">"
    try:
        shoff, = struct.unpack_from(end + "Q", data, 0x28)
        shentsize, shnum = struct.unpack_from(end + "HH", data, 0x3A)
        sections = [struct.unpack_from(end + "IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    except struct.error:
        raise NotReadable("%s: its section headers are cut short" % path)
    names = set()
    for _name, kind, _flags, _addr, offset, size, link, _info, _align, entsize in sections:
        if kind != SHT_DYNSYM or not entsize:
            continue
        strtab = sections[link]
        str_off, str_size = strtab[4], strtab[5]
        for i in range(1, size // entsize):
            try:
                st_name, st_info, st_other, st_shndx = struct.unpack_from(end + "IBBH", data, offset + i * entsize)
            except struct.error:
                break
            bind, typ, visibility = st_info >> 4, st_info & 0xF, st_other & 0x3
            if st_shndx == SHN_UNDEF or bind not in (1, 2) or typ not in (STT_FUNC, STT_GNU_IFUNC):
                continue
            if visibility not in (0, 3) or st_name >= str_size:
                continue
            start = str_off + st_name
            names.add(data[start:data.index(b"\0", start)].decode("utf-8", "replace"))
        return names
    raise NotReadable("%s has no dynamic symbol table" % path)

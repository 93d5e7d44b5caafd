// Small machines written for the tests, in NCCL's topology XML.
#pragma once

namespace hora::topology::testing {

// One machine with every PCIe path class NCCL's format can express:
//   NUMA 0: switch 10 { switch 11 { GPU0 12, GPU1 13 }, switch 14 { GPU2 15, NIC 16 (IB) } }
//           GPU3 20 directly below the CPU
//   NUMA 1: GPU4 30, eth0 (a NIC known only by name)
// GPU0-GPU1 PIX, GPU0-GPU2 PXB, GPU0-GPU3 PHB, GPU0-GPU4 SYS, GPU2-NIC PIX.
inline constexpr const char* kMixedMachine = R"(<system version="1">
  <cpu numaid="0" affinity="0000ffff" arch="x86_64" vendor="GenuineIntel" familyid="6" modelid="85">
    <pci busid="0000:10:00.0" class="0x060400" link_speed="16 GT/s" link_width="16">
      <pci busid="0000:11:00.0" class="0x060400" link_speed="16 GT/s" link_width="16">
        <pci busid="0000:12:00.0" class="0x030200" vendor="0x10de" link_speed="16 GT/s" link_width="16"/>
        <pci busid="0000:13:00.0" class="0x030200" vendor="0x10de" link_speed="16 GT/s" link_width="16"/>
      </pci>
      <pci busid="0000:14:00.0" class="0x060400" link_speed="16 GT/s" link_width="16">
        <pci busid="0000:15:00.0" class="0x030200" vendor="0x10de" link_speed="16 GT/s" link_width="16"/>
        <pci busid="0000:16:00.0" class="0x020700" vendor="0x15b3" link_speed="16 GT/s" link_width="16"/>
      </pci>
    </pci>
    <pci busid="0000:20:00.0" class="0x030200" vendor="0x10de" link_speed="8 GT/s" link_width="16"/>
  </cpu>
  <cpu numaid="1" affinity="ffff0000" arch="x86_64" vendor="GenuineIntel" familyid="6" modelid="85">
    <pci busid="0000:30:00.0" class="0x030200" vendor="0x10de" link_speed="16 GT/s" link_width="16"/>
    <nic>
      <net name="eth0" dev="1" speed="25000" port="0" guid="0x0" maxconn="65536" gdr="0"/>
    </nic>
  </cpu>
</system>
)";

// Four GPUs in bus order 11, 12, 13, 14 below one CPU, where the PCIe
// switches pair them across that order: switch A holds 11 and 13, switch B
// holds 12 and 14. Locality order differs from bus order.
inline constexpr const char* kCrossedSwitches = R"(<system version="1">
  <cpu numaid="0" affinity="000000ff" arch="x86_64" vendor="AuthenticAMD">
    <pci busid="0000:a0:00.0" class="0x060400" link_speed="16 GT/s" link_width="16">
      <pci busid="0000:11:00.0" class="0x030200" link_speed="16 GT/s" link_width="16"/>
      <pci busid="0000:13:00.0" class="0x030200" link_speed="16 GT/s" link_width="16"/>
    </pci>
    <pci busid="0000:b0:00.0" class="0x060400" link_speed="16 GT/s" link_width="16">
      <pci busid="0000:12:00.0" class="0x030200" link_speed="16 GT/s" link_width="16"/>
      <pci busid="0000:14:00.0" class="0x030200" link_speed="16 GT/s" link_width="16"/>
    </pci>
  </cpu>
</system>
)";

}  // namespace hora::topology::testing

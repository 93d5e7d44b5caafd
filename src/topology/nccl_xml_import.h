// Reads NCCL's topology XML (the NCCL_TOPO_FILE format):
//
//   <system version="1">
//     <cpu numaid="0" affinity="..." arch="x86_64" vendor="GenuineIntel" ...>
//       <pci busid="ffff:ff:01.0" class="0x060400" link_speed="16 GT/s" link_width="16">
//         <pci busid="0001:00:00.0" class="0x030200" ...>
//           <gpu dev="0" sm="80" rank="0" gdr="1">
//             <nvlink target="0002:00:00.0" count="12" tclass="0x030200"/>
//           </gpu>
//         </pci>
//         <pci busid="0101:00:00.0" class="0x020700" ...>
//           <nic><net name="mlx5_0" dev="0" speed="200000" .../></nic>
//         </pci>
//       </pci>
//       <nic><net name="eth0" speed="100000" .../></nic>
//     </cpu>
//   </system>
//
// Files may be partial: PCI devices without <gpu>/<nic> children are still
// GPUs (class 0x03xxxx) and NICs (class 0x02xxxx).
#pragma once

#include "topology/system_builder.h"
#include "topology/xml_reader.h"

namespace hora::topology {

// Adds the machine under a parsed <system> element; `source` (the file name)
// prefixes error messages, which also give the line.
void importNcclXml(const xml::Element& system, const std::string& source, SystemBuilder& builder);

}  // namespace hora::topology

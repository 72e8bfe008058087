// Hosts speak BitTorrent over TCP; exporting no RTCPeerConnection turns webtorrent's WebRTC off.
// simple-peer imports these three names, so they exist, as undefined.
export const RTCPeerConnection = undefined
export const RTCSessionDescription = undefined
export const RTCIceCandidate = undefined
export default {}

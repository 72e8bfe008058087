// Hosts speak BitTorrent over TCP; exporting no RTCPeerConnection turns webtorrent's WebRTC off.
module.exports = {}
